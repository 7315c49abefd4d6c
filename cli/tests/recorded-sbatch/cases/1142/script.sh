#!/bin/bash
#BSUB -W 90
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1

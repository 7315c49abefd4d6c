#!/bin/bash
#BSUB -m 'n1 n2'
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1

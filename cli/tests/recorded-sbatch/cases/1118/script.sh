#!/bin/bash
#PBS -l nodes=n1+n2
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
